"""refc: the top layer over the reference compiler (``refcompiler``), the
verification suite (``fuzz``) and the op table (``specs``). ``refc.cli`` is the
``refc`` command; nothing in the project imports it."""
