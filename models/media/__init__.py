"""The media library: files checked by their content, stored by their sha256, prepared for each network at send time."""
