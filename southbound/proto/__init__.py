"""Southbound protos (heliostat.southbound.v1) and their committed generated stubs."""
