"""Code shared by the sparkprov services: event encoding, node ids and connection defaults.

The protobuf modules generated from proto/ live in ``sparkprov.v1`` (built by ``make setup``,
never committed); only :mod:`sparkprov.events` and the services' adapter modules import them.
"""
