//! The settings of a session that works in another directory than the process (an editor
//! opens sessions in its own project directories): the same settings, with the working
//! directory, the permission rules' relative paths and the project's commands and skills
//! moved there.

use super::Settings;
use std::path::PathBuf;

impl Settings {
    /// These settings for work in `cwd` (an absolute path to an existing directory).
    pub fn for_directory(&self, cwd: PathBuf) -> Result<Settings, String> {
        if !cwd.is_absolute() {
            return Err(format!("`{}` is not an absolute path", cwd.display()));
        }
        if !cwd.is_dir() {
            return Err(format!("`{}` is not a directory", cwd.display()));
        }
        let rules = self
            .permission_rules
            .rules
            .anchored_at(&cwd)
            .map_err(|e| format!("{}: {}", e.key, e.message))?;
        let mut settings = self.clone();
        settings.permission_rules.rules = rules;
        settings.permission_rules.cwd = cwd.clone();
        // The project's own commands and skills.
        settings.extensions =
            std::sync::Arc::new(crate::extensions::Extensions::load(&self.paths.home, &cwd));
        settings.project_hooks = crate::extensions::hooks::trust::ProjectHooks::load(&cwd);
        settings.cwd = cwd;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    #[test]
    fn a_directory_copy_moves_the_working_directory_and_refuses_what_is_not_one() {
        let settings = super::super::resolve(
            &Cli::parse_from(["agent"]),
            Default::default(),
            std::path::Path::new("/config.toml"),
            super::super::Paths {
                config_file: "/config.toml".into(),
                sessions_dir: "/sessions".into(),
                log_dir: "/logs".into(),
                checkpoints_dir: "/checkpoints".into(),
                home: "/home".into(),
            },
            "/".into(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let moved = settings.for_directory(dir.path().to_path_buf()).unwrap();
        assert_eq!(moved.cwd, dir.path());
        assert_eq!(moved.permission_rules.cwd, dir.path());
        let relative = settings.for_directory("relative/dir".into()).unwrap_err();
        assert!(relative.contains("not an absolute path"), "{relative}");
        let missing = settings
            .for_directory(dir.path().join("missing"))
            .unwrap_err();
        assert!(missing.contains("not a directory"), "{missing}");
    }
}
