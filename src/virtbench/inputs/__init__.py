"""The rules for what enters virtbench from a user, one per kind of input, reused everywhere:
bounded text files and YAML (:mod:`.yamlfile`), what text is (:mod:`.unicode_text`: no NUL,
no lone surrogate), how a number is written (:mod:`.ascii_numbers`: digits 0-9), finite
numbers and port numbers (:mod:`.values`, also as command-line option types)."""
