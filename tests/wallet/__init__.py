"""Tests of the reference operator wallet (examples/wallet), and its helper for other tests."""
