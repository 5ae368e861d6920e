"""clusterwatch: monitoring for HTCondor pools, Slurm clusters and PanDA Harvester instances."""

__version__ = "0.1.0"
