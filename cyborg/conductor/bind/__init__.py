"""The bind of accelerator requests: ARQ records and the bind workflow."""
