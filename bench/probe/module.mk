probe_USES := core
