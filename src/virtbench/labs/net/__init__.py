"""Network labs: namespaces joined by a virtual switch (study 001) or a router (study 002)."""
