"""Campaigns: sessions and runners for one configuration, the campaign loop, shards and
distributed runs, the command line's options, console and saved failures.
"""
