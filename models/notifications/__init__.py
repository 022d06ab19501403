"""In-app notifications: a workspace's messages, who has read them, and where they are also sent."""
