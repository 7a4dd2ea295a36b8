"""Dialogs: setup, about, tour, critical-point thresholds."""
