"""Example workflows run under capture (``make demo`` runs :mod:`examples.people`)."""
