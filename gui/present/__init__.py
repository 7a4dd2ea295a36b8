"""Qt-free presentation: lane HTML, chart rows, inside data, lane fields, colours."""
