"""virtbench: reproducible, statistically rigorous experiments on virtualised infrastructure."""

__version__ = "0.1.0"
