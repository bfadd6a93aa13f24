"""Wire protocols: pure parse, translate and stream conversion. No I/O."""
