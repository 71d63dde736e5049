"""The oracle's stages, one module each; ``fuzz.oracle.chain.CHAIN`` orders them."""
