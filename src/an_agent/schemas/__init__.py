"""schemas layer (see DESIGN.md)."""
