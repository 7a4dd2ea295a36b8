"""The desktop shell: actions, menus, settings, files, autosave, export, theme, worker thread."""
