"""Generated from controller.northbound.proto by southbound.protoc; do not edit."""
