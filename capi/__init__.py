"""LSE's C API: ``lse.h``, ``liblse.so`` (built by ``pip install``) and
``lse-config``. The C layer wraps ``lse.runtime.api`` and nothing else."""
