"""What this Concord build has, with Horovod's names (``horovod.torch.mpi_built`` etc.).

Concord moves bytes over MPI only (Open MPI or MPICH, point-to-point plus its own
algorithms) and reduces CPU tensors; it has no Gloo, NCCL, DDL, oneCCL, CUDA or ROCm
backend, so those report False. The answers are constants of the build, valid before
:func:`concord.init`.
"""


def mpi_built():
    """True: Concord is always built against MPI."""
    return True


def mpi_enabled():
    """True: MPI is the only controller and transport (Horovod: MPI chosen at run time)."""
    return True


def gloo_built():
    """False: there is no Gloo controller."""
    return False


def gloo_enabled():
    """False: there is no Gloo controller."""
    return False


def nccl_built():
    """False: no NCCL (GPU) collectives."""
    return False


def ddl_built():
    """False: no IBM DDL."""
    return False


def ccl_built():
    """False: no Intel oneCCL."""
    return False


def cuda_built():
    """False: tensors must be CPU tensors."""
    return False


def rocm_built():
    """False: tensors must be CPU tensors."""
    return False
