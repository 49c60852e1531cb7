"""Replay: golden traces stand in for models, and the driver's I/O is checked against them."""
