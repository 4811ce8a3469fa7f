"""The entity-box fold: items and their lifecycle, the view, the injection lines, the snapshot codec."""
