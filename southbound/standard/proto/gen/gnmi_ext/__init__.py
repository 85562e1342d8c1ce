"""Generated from southbound.standard.proto by southbound.protoc; do not edit."""
