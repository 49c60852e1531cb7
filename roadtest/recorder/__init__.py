"""Recording: traces of live runs (`roadtest record`), and imports of traces captured elsewhere."""
