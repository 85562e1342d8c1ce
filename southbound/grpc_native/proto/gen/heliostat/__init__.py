"""Generated from southbound.grpc_native.proto by southbound.grpc_native.protoc; do not edit."""
