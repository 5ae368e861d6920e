"""Identity resolution: remembered per job directory, bounded, retried with a backoff only
when the job ID does not depend on it."""

from __future__ import annotations

from clusterwatch.jobs.discovery import JobCgroup
from clusterwatch.jobs.file_reader import ErrorCounts, FileReader, read_file
from clusterwatch.jobs.identities import RETRY_S, TRIES, Identities
from clusterwatch.jobs.procfs import ProcReader
from tests.jobs.fake_tree import ALICE, Tree


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingOpener:
    def __init__(self) -> None:
        self.environ_reads = 0

    def __call__(self, path: str) -> bytes:
        if path.endswith("/environ"):
            self.environ_reads += 1
        return read_file(path)


def identities(tree: Tree) -> tuple[Identities, Clock, CountingOpener]:
    clock, opener = Clock(), CountingOpener()
    procs = ProcReader(str(tree.proc), FileReader(ErrorCounts(), opener))
    return Identities(procs, clock), clock, opener


def job(tree: Tree, name: str, jobid: str | None, inode: int = 1) -> JobCgroup:
    return JobCgroup(scheduler="slurm", key=f"scope/{name}", name=name, inode=inode,
                     cgroup_version=2, jobid=jobid, procs_dir=str(tree.cgroup))


def test_it_reads_the_environment_once_per_job_directory(tree: Tree) -> None:
    tree.process(101, environ={"SLURM_JOB_ID": "5", "SLURM_JOB_ACCOUNT": "a"})
    resolver, _, opener = identities(tree)
    first = resolver.resolve(job(tree, "job_5", "5"), [101])
    assert resolver.resolve(job(tree, "job_5", "5"), [101]) == first
    assert first[0].account == "a" and first[1] == ALICE
    assert opener.environ_reads == 1
    # A new directory of the same name (another inode) is a new job: read again.
    resolver.resolve(job(tree, "job_5", "5", inode=2), [101])
    assert opener.environ_reads == 2


def test_it_looks_at_a_bounded_number_of_processes(tree: Tree) -> None:
    pids = list(range(200, 200 + 3 * TRIES))
    for pid in pids:
        tree.process(pid, uid=0)  # root and no Slurm variables: nothing to learn
    resolver, _, opener = identities(tree)
    metadata, uid = resolver.resolve(job(tree, "s0000000000001", None), pids)
    assert (metadata.jobid, uid) == (None, None)
    assert opener.environ_reads == TRIES


def test_it_retries_an_unresolved_job_with_a_path_job_id_only_after_a_while(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, clock, opener = identities(tree)
    resolver.resolve(job(tree, "job_5", "5"), [101])
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 1
    clock.now += RETRY_S
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 2


def test_it_retries_an_unresolved_sluid_job_at_every_collection(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, _, opener = identities(tree)
    sluid = job(tree, "s8FXKTA79XAR00", None)
    resolver.resolve(sluid, [101])
    tree.process(102, environ={"SLURM_JOB_ID": "99"})
    assert resolver.resolve(sluid, [101, 102])[0].jobid == "99"
    assert opener.environ_reads == 3


def test_it_forgets_jobs_whose_directories_are_gone(tree: Tree) -> None:
    tree.process(101, environ={"SLURM_JOB_ID": "5"})
    resolver, _, opener = identities(tree)
    resolver.resolve(job(tree, "job_5", "5"), [101])
    resolver.keep_only(set())
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 2
