"""roadtest: test real Linux drivers against Python models of their hardware."""
