"""The rules for what enters virtbench from a user, one per kind of input, reused everywhere:
bounded text files and YAML (:mod:`.yamlfile`), finite numbers and port numbers
(:mod:`.values`, also as command-line option types)."""
