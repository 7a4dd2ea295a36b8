"""The window's commands that work on the worker thread, one module per command (gui.state.tasks.base: the Task
they share; kind.py: what a kind of task does to the window; messages.py: what their work reports). A module
holds a command's checks (`prepare`: a Task, or None with a notice), its work and its finish."""
