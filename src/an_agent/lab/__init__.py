"""lab layer (see DESIGN.md)."""
