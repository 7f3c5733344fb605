"""Reports: read run directories, write figures, HTML and Markdown."""
