"""Attacks: escape attempts (primitives, rendering, library routes, deferred objects) and
resource bombs, as hypothesis strategies and data tables.
"""
