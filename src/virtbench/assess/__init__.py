"""``virtbench assess``: what is misconfigured here, what fixing it buys (measured), the change."""
