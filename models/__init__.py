"""Tickwork's domain: one package per concept, layered (see ``docs/architecture.md``).

Importing this package loads nothing; :mod:`models.wings` puts the whole domain together.
"""
