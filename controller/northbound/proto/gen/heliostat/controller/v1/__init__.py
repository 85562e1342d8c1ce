"""Generated from controller.northbound.proto by southbound.grpc_native.protoc; do not edit."""
