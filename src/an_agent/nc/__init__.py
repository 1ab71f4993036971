"""nc layer (see DESIGN.md)."""
