"""Entry points of Cyborg's console scripts."""
