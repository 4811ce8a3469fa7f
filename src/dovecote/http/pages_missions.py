"""The Human View's missions page (``/missions``): heads by phase, the landing count, each chain,
and the two human gestures.

Law: like every page it is the REST answers rendered (``GET /api/v1/missions``,
``GET /api/v1/missions/{mission_id}`` and ``GET /api/v1/blocks``, read in one
worker-thread call); every count is a link (``/missions?phase=<phase>`` lists
those heads, ``?mission=<id>`` opens one chain).

The gestures, importing a merge_wait mission's receipt candidate and archiving a
landed or failed mission, are POST forms of the signed-in person's session
(``Pages.signed_in``: no bearer token, the session's CSRF token, same origin)
that confirm by the mission id typed into the form and carry the person's
gesture passphrase, which the handle checks as it checks the terminal's
(``ops.missions.gestures.check``): the session alone, which the login link gives whoever
holds it, is not enough. Only here does the handle get the ``human-view``
gesture: no REST route or MCP tool passes one, so no token an agent or operator
holds reaches them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote
from dovecote.http import inputs, rest
from dovecote.http.pages import Pages, person_actor, render

#: The gestures, by the last part of their path: the verb, and the handle's call.
GESTURES = {"archive": "mission_archive", "receipt-import": "receipt_import"}
#: Which heads offer which gesture, by path part: the phase graph's (``Dovecote.gestures_by_phase``), not a copy.
OFFERS = {phase: next(k for k, verb in GESTURES.items() if verb == gesture)
          for phase, gesture in Dovecote.gestures_by_phase().items()}


class MissionsPageParams(rest.Params):
    mission: str | None = None
    phase: str | None = None  # one of the answer's by_phase keys (the phase graph's phases)


def missions_view(dc: Dovecote, p: MissionsPageParams) -> dict[str, Any]:
    """The heads (narrowed to one phase if asked), the blocks, and the chain of the mission asked for."""
    found = dc.missions(verbs.Missions())
    phases = list(found.by_phase)
    if p.phase is not None and p.phase not in phases:
        raise Refusal("invalid_field", f"phase: {p.phase!r} is not a phase (one of: {', '.join(phases)})")
    heads = [h for h in found.missions if p.phase is None or h.phase == p.phase]
    chosen = dc.mission(verbs.Mission(mission_id=p.mission)) if p.mission else None  # unknown_mission: error page
    return {"found": found, "heads": heads, "chosen": chosen, "phase": p.phase, "phases": phases,
            "blocks": dc.blocks(verbs.Blocks()), "offers": OFFERS}


def endpoints(pages: Pages) -> tuple[Any, Any]:
    """The page (GET ``/missions``) and the gesture (POST ``/missions/{mission_id}/{gesture}``)."""

    async def page(request: Request) -> Response:
        p = rest.parse(MissionsPageParams, request)
        return render(request, pages.sessions, "missions.html", **await pages.run(missions_view, p))

    async def gesture(request: Request) -> Response:
        person, form = await pages.signed_in(request)
        which = request.path_params["gesture"]
        verb = GESTURES.get(which)
        if verb is None:
            raise Refusal("not_found", f"no gesture {which!r} (one of: {', '.join(GESTURES)})")
        mission_id = request.path_params["mission_id"]
        if form.get("confirm", "").strip() != mission_id:
            raise Refusal("human_gesture_required", f"type the mission id {mission_id} to confirm the {which}")
        v = inputs.convert(verbs.MissionArchive if verb == "mission_archive" else verbs.ReceiptImport,
                           {"mission_id": mission_id})
        remote.refuse_if_read_only(verb, v, pages.read_only)
        actor = person_actor(person)
        secret = form.get("passphrase") or None

        def call(dc: Dovecote, x: Any) -> object:
            if verb == "mission_archive":
                return dc.mission_archive(x, gesture="human-view", passphrase=secret, actor=actor)
            return dc.receipt_import(x, gesture="human-view", passphrase=secret, actor=actor)

        await pages.run(call, v)
        return RedirectResponse(f"/missions?mission={mission_id}", status_code=303)

    return page, gesture
