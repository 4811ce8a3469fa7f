"""The packed run of folded ids a restored inbox fold dedups new letters against.

``pack_ids``/``in_packed`` stand in for a set of every id in the box (a cold
read after one new letter looks up one id instead of building a set of forty
thousand), so they must answer exactly what the set answers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox.book import in_packed, pack_ids

_ID = st.text(alphabet="0123456789abcdef", min_size=12, max_size=12)
_ODD = st.text(max_size=14)  # not a letter id: the wrong length, another alphabet


@settings(max_examples=200, deadline=None)
@given(first=st.sets(_ID | _ODD), then=st.sets(_ID | _ODD), asked=st.lists(_ID | _ODD, max_size=20))
def test_a_packed_run_answers_what_the_set_of_its_ids_answers(
    first: set[str], then: set[str], asked: list[str]
) -> None:
    packed, odd = pack_ids(first)
    merged, odd2 = pack_ids(then, packed)  # a snapshot of a restored book: the old run and the new ids
    everything = first | then
    for lid in [*asked, *everything]:
        assert (in_packed(packed, lid) or lid in odd) == (lid in first)
        assert (in_packed(merged, lid) or lid in odd or lid in odd2) == (lid in everything)
    assert len(merged) == 12 * len({i for i in everything if len(i) == 12 and set(i) <= set("0123456789abcdef")})
