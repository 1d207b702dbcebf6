"""What a collection is made of, shared by the writer and the readers: the manifest, the lexical and
vector stores, the embedders, ids and names."""
