"""The views: widgets over the run state (they import neither shell/ nor the main window)."""
