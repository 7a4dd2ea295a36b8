"""Files: run files and explain files read and written (atomically), autosaves, generation configs read.

decoding/ turns runs into JSON text and back and opens no file; this package is where that text meets the disk.
"""
