"""Revision 0020: posts' media links are kept as plain links appended to their text, and no network call is made."""

import json

from sqlalchemy import create_engine, text

from webapp import MIGRATIONS_DIR


def test_links_older_posts_had_are_appended_to_their_text_and_their_media_emptied(app, database_url, egress_allow):
    from flask_migrate import downgrade, upgrade

    egress_allow("")  # nothing may be fetched: the upgrade calls nobody
    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with app.app_context():
            downgrade(directory=str(MIGRATIONS_DIR), revision="0014")
        with engine.begin() as conn:
            workspace = conn.execute(text("INSERT INTO workspaces (name, timezone, plan, created_at) VALUES "
                                          "('Old', 'UTC', 'free', CURRENT_TIMESTAMP) RETURNING id")).scalar()
            for body, media in (("Fresh bread", ["https://cdn.example.com/a.jpg", "https://cdn.example.com/b.png"]),
                                ("No pictures", [])):
                conn.execute(text(
                    "INSERT INTO posts (workspace_id, body, media, wall_date, wall_time, status, revision, created_at, "
                    "updated_at) VALUES (:w, :body, :media, '2027-01-04', '09:00:00', 'draft', 1, CURRENT_TIMESTAMP, "
                    "CURRENT_TIMESTAMP)"), {"w": workspace, "body": body, "media": json.dumps(media)})
        with app.app_context():
            upgrade(directory=str(MIGRATIONS_DIR))
        with engine.connect() as conn:
            found = {body: media for body, media in conn.execute(text("SELECT body, media FROM posts ORDER BY id"))}
        found = {body: json.loads(media) if isinstance(media, str) else media for body, media in found.items()}
        assert found == {"Fresh bread\n\nhttps://cdn.example.com/a.jpg\nhttps://cdn.example.com/b.png": [],
                         "No pictures": []}
    finally:
        engine.dispose()
