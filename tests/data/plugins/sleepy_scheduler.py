"""A user's scheduler that hangs (the campaign's time limit per case must stop it)."""

import time


def schedule(graph, deps, seed=0):
    time.sleep(60)
    return list(deps.nodes)
