"""Delivery of export files: one interface, one module per destination kind."""
