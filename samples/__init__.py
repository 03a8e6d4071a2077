"""The sample bundles' generators and the benchmark tools; not installed with gpu-triage.

Every module here is imported from the repository root as ``samples.<module>``
(``samples.samplekit``, ``samples.synth``, ``samples.scenarios_node``...), by the tests
and by the generators alike; ``tests/test_samples_import_root.py`` keeps it so.
"""
