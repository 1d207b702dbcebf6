"""The write side of retrieval: files → documents → chunks → a collection (``c1 index``, ``c1 watch``)."""
