"""Generated from southbound.grpc_native.proto by southbound.protoc; do not edit."""
