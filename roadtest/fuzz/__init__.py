"""Hypothesis for roadtest: what a device may answer (strategies), how long and how hard
to look (profiles), and the hostile device."""
