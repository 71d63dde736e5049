"""A user's scheduler that calls sys.exit (the campaign must survive it)."""

import sys


def schedule(graph, deps, seed=0):
    sys.exit(3)
