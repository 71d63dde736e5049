"""Graph optimizations that run before scheduling (DESIGN §5), one module each:
``refcompiler.graph_passes.dce.dce``. (The functions are not re-exported here,
so that ``refcompiler.graph_passes.dce`` stays the module, not the function.)"""
