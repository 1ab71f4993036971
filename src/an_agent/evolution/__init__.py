"""evolution layer (see DESIGN.md)."""
