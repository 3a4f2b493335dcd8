"""estategen: one blueprint for a hybrid GPU estate, rendered for Slurm, Ansible and Pulumi."""

__version__ = "0.1.0"
