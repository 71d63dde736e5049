from refc.cli import entry

entry()
