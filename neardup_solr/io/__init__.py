"""Files in and out: input formats and record readers, resumable and atomic outputs, the sample data."""
